__polyglavSearch.add("b000-of-001","m","m-bac3b60fb1b6",{"sessions":5,"documents":18,"version":"bac3b60fb1b6","terms":"d nos stat","termChunks":4});
