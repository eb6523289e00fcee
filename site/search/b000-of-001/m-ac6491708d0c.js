__polyglavSearch.add("b000-of-001","m","m-ac6491708d0c",{"sessions":5,"documents":18,"version":"ac6491708d0c","terms":"d nos stat","termChunks":4});
