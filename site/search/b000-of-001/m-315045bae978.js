__polyglavSearch.add("b000-of-001","m","m-315045bae978",{"sessions":5,"documents":18,"version":"315045bae978","terms":"d nos stat","termChunks":4});
