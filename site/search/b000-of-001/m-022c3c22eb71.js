__polyglavSearch.add("b000-of-001","m","m-022c3c22eb71",{"sessions":5,"documents":18,"version":"022c3c22eb71","terms":"d nos stat","termChunks":4});
