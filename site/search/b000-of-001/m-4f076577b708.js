__polyglavSearch.add("b000-of-001","m","m-4f076577b708",{"sessions":5,"documents":18,"version":"4f076577b708","terms":"d nos stat","termChunks":4});
