__polyglavSearch.add("b000-of-001","m","m-7af78cbedab7",{"sessions":5,"documents":18,"version":"7af78cbedab7","terms":"d nos stat","termChunks":4});
