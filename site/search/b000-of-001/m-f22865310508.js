__polyglavSearch.add("b000-of-001","m","m-f22865310508",{"sessions":5,"documents":18,"version":"f22865310508","terms":"d nos stat","termChunks":4});
