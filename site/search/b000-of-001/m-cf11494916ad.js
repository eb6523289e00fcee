__polyglavSearch.add("b000-of-001","m","m-cf11494916ad",{"sessions":5,"documents":18,"version":"cf11494916ad","terms":"d nos stat","termChunks":4});
