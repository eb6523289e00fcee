__polyglavSearch.add("b000-of-001","s","s-d469c2e89fae","00230B");
