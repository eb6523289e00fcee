__polyglavSearch.add("b000-of-001","s","s-cf11494916ad","00230B");
