__polyglavSearch.add("b000-of-001","s","s-bd2d69a24720","00230B");
