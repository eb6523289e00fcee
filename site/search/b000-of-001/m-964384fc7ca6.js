__polyglavSearch.add("b000-of-001","m","m-964384fc7ca6",{"sessions":5,"documents":18,"version":"964384fc7ca6","terms":"d nos stat","termChunks":4});
