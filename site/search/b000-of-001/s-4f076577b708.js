__polyglavSearch.add("b000-of-001","s","s-4f076577b708","00230B");
