__polyglavSearch.add("b000-of-001","s","s-829b641efe3e","00230B");
