__polyglavSearch.add("b000-of-001","m","m-7e19e7b0e8ee",{"sessions":5,"documents":18,"version":"7e19e7b0e8ee","terms":"d nos stat","termChunks":4});
