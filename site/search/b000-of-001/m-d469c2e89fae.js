__polyglavSearch.add("b000-of-001","m","m-d469c2e89fae",{"sessions":5,"documents":18,"version":"d469c2e89fae","terms":"d nos stat","termChunks":4});
