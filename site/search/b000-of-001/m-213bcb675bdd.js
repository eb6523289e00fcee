__polyglavSearch.add("b000-of-001","m","m-213bcb675bdd",{"sessions":5,"documents":18,"version":"213bcb675bdd","terms":"d nos stat","termChunks":4});
