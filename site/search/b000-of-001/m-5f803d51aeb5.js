__polyglavSearch.add("b000-of-001","m","m-5f803d51aeb5",{"sessions":5,"documents":18,"version":"5f803d51aeb5","terms":"d nos stat","termChunks":4});
