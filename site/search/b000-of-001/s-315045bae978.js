__polyglavSearch.add("b000-of-001","s","s-315045bae978","00230B");
