__polyglavSearch.add("b000-of-001","s","s-f22865310508","00230B");
