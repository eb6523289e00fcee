__polyglavSearch.add("b000-of-001","s","s-bac3b60fb1b6","00230B");
