__polyglavSearch.add("b000-of-001","m","m-65370f510d09",{"sessions":5,"documents":18,"version":"65370f510d09","terms":"d nos stat","termChunks":4});
