__polyglavSearch.add("b000-of-001","s","s-5490317221da","00230B");
