__polyglavSearch.add("b000-of-001","s","s-7e19e7b0e8ee","00230B");
