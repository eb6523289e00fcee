__polyglavSearch.add("b000-of-001","s","s-10a54bd348ab","00230B");
