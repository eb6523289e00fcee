__polyglavSearch.add("b000-of-001","s","s-969ce5c8ab66","00230B");
