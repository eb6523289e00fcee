__polyglavSearch.add("b000-of-001","s","s-f1c2e4c7a836","00230B");
