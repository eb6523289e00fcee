__polyglavSearch.add("b000-of-001","s","s-9209bcca244c","00230B");
