__polyglavSearch.add("b000-of-001","s","s-ac6491708d0c","00230B");
