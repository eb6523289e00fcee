__polyglavSearch.add("b000-of-001","m","m-beea256c85bf",{"sessions":5,"documents":18,"version":"beea256c85bf","terms":"d nos stat","termChunks":4});
