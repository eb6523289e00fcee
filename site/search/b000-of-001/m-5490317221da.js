__polyglavSearch.add("b000-of-001","m","m-5490317221da",{"sessions":5,"documents":18,"version":"5490317221da","terms":"d nos stat","termChunks":4});
