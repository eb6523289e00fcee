__polyglavSearch.add("b000-of-001","s","s-29f4ba2b57bb","00230B");
