__polyglavSearch.add("b000-of-001","s","s-bc954fac3eb6","00230B");
