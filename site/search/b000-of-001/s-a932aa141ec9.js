__polyglavSearch.add("b000-of-001","s","s-a932aa141ec9","00230B");
