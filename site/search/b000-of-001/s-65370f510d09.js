__polyglavSearch.add("b000-of-001","s","s-65370f510d09","00230B");
