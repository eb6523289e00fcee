__polyglavSearch.add("b000-of-001","s","s-7af78cbedab7","00230B");
