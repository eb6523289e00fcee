__polyglavSearch.add("b000-of-001","s","s-9e73af376582","00230B");
