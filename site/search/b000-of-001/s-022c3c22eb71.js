__polyglavSearch.add("b000-of-001","s","s-022c3c22eb71","00230B");
