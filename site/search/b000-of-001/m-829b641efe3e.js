__polyglavSearch.add("b000-of-001","m","m-829b641efe3e",{"sessions":5,"documents":18,"version":"829b641efe3e","terms":"d nos stat","termChunks":4});
