__polyglavSearch.add("b000-of-001","m","m-2d3754ca6ce7",{"sessions":5,"documents":18,"version":"2d3754ca6ce7","terms":"d nos stat","termChunks":4});
