__polyglavSearch.add("b000-of-001","s","s-213bcb675bdd","00230B");
