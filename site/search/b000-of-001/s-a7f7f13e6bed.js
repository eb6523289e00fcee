__polyglavSearch.add("b000-of-001","s","s-a7f7f13e6bed",["002410","d-7d0a438b12e3 d-3e6e45041996 d-26a5ca467d12"]);
