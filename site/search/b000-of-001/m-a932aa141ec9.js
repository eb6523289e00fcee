__polyglavSearch.add("b000-of-001","m","m-a932aa141ec9",{"sessions":5,"documents":18,"version":"a932aa141ec9","terms":"d nos stat","termChunks":4});
