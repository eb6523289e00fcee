__polyglavSearch.add("b000-of-001","m","m-bc954fac3eb6",{"sessions":5,"documents":18,"version":"bc954fac3eb6","terms":"d nos stat","termChunks":4});
