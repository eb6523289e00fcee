__polyglavSearch.add("b000-of-001","m","m-9209bcca244c",{"sessions":5,"documents":18,"version":"9209bcca244c","terms":"d nos stat","termChunks":4});
