__polyglavSearch.add("b000-of-001","m","m-00eb84cde6fd",{"sessions":5,"documents":18,"version":"00eb84cde6fd","terms":"d nos stat","termChunks":4});
