__polyglavSearch.add("b000-of-001","m","m-a176bc126324",{"sessions":5,"documents":18,"version":"a176bc126324","terms":"d nos stat","termChunks":4});
