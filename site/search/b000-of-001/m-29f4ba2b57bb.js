__polyglavSearch.add("b000-of-001","m","m-29f4ba2b57bb",{"sessions":5,"documents":18,"version":"29f4ba2b57bb","terms":"d nos stat","termChunks":4});
