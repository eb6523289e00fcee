__polyglavSearch.add("b000-of-001","s","s-0eca59773d7d","00230B");
