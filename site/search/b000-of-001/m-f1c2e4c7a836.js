__polyglavSearch.add("b000-of-001","m","m-f1c2e4c7a836",{"sessions":5,"documents":18,"version":"f1c2e4c7a836","terms":"d nos stat","termChunks":4});
