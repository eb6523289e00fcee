__polyglavSearch.add("b000-of-001","m","m-bd2d69a24720",{"sessions":5,"documents":18,"version":"bd2d69a24720","terms":"d nos stat","termChunks":4});
