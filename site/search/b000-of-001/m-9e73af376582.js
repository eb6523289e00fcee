__polyglavSearch.add("b000-of-001","m","m-9e73af376582",{"sessions":5,"documents":18,"version":"9e73af376582","terms":"d nos stat","termChunks":4});
