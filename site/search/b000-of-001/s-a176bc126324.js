__polyglavSearch.add("b000-of-001","s","s-a176bc126324","00230B");
