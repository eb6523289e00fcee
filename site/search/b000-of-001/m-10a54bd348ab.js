__polyglavSearch.add("b000-of-001","m","m-10a54bd348ab",{"sessions":5,"documents":18,"version":"10a54bd348ab","terms":"d nos stat","termChunks":4});
