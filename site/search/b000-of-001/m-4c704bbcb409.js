__polyglavSearch.add("b000-of-001","m","m-4c704bbcb409",{"sessions":5,"documents":18,"version":"4c704bbcb409","terms":"d nos stat","termChunks":4});
