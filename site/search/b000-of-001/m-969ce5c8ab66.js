__polyglavSearch.add("b000-of-001","m","m-969ce5c8ab66",{"sessions":5,"documents":18,"version":"969ce5c8ab66","terms":"d nos stat","termChunks":4});
