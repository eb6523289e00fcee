__polyglavSearch.add("b000-of-001","m","m-a43b590addeb",{"sessions":5,"documents":18,"version":"a43b590addeb","terms":"d nos stat","termChunks":4});
