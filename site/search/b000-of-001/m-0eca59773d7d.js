__polyglavSearch.add("b000-of-001","m","m-0eca59773d7d",{"sessions":5,"documents":18,"version":"0eca59773d7d","terms":"d nos stat","termChunks":4});
