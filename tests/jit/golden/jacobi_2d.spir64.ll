; ModuleID = 'jacobi_2d'
source_filename = "jacobi_2d"
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

; Function Attrs: nounwind
define spir_kernel void @jacobi_2d(double addrspace(1)* %v, i64 %v.extent0, i64 %v.extent1, double addrspace(1)* %u, i64 %u.extent0, i64 %u.extent1, i64 %begin0, i64 %end0, i64 %begin1, i64 %end1) #0 !kernel_arg_addr_space !1 !kernel_arg_access_qual !2 !kernel_arg_type !3 !kernel_arg_base_type !3 !kernel_arg_type_qual !4 !kernel_arg_name !5 {
entry:
  %0 = call spir_func i64 @_Z13get_global_idj(i32 1) #1
  %i0 = add nsw i64 %begin0, %0
  %1 = icmp slt i64 %i0, %end0
  %2 = call spir_func i64 @_Z13get_global_idj(i32 0) #1
  %i1 = add nsw i64 %begin1, %2
  %3 = icmp slt i64 %i1, %end1
  %4 = and i1 %1, %3
  br i1 %4, label %point, label %done

point:                                            ; preds = %entry
  %5 = icmp sgt i64 %i0, 0
  %6 = sub i64 %u.extent0, 1
  %7 = icmp slt i64 %i0, %6
  %8 = and i1 %5, %7
  %9 = icmp sgt i64 %i1, 0
  %10 = and i1 %8, %9
  %11 = sub i64 %u.extent1, 1
  %12 = icmp slt i64 %i1, %11
  %13 = and i1 %10, %12
  br i1 %13, label %then, label %else

else:                                             ; preds = %point
  %14 = mul i64 %i0, %u.extent1
  %15 = add i64 %14, %i1
  %16 = getelementptr inbounds double, double addrspace(1)* %u, i64 %15
  %17 = load double, double addrspace(1)* %16, align 8
  %18 = mul i64 %i0, %v.extent1
  %19 = add i64 %18, %i1
  %20 = getelementptr inbounds double, double addrspace(1)* %v, i64 %19
  store double %17, double addrspace(1)* %20, align 8
  br label %endif

then:                                             ; preds = %point
  %21 = sub i64 %i0, 1
  %22 = mul i64 %21, %u.extent1
  %23 = add i64 %22, %i1
  %24 = getelementptr inbounds double, double addrspace(1)* %u, i64 %23
  %25 = load double, double addrspace(1)* %24, align 8
  %26 = add i64 %i0, 1
  %27 = mul i64 %26, %u.extent1
  %28 = add i64 %27, %i1
  %29 = getelementptr inbounds double, double addrspace(1)* %u, i64 %28
  %30 = load double, double addrspace(1)* %29, align 8
  %31 = fadd double %25, %30
  %32 = sub i64 %i1, 1
  %33 = mul i64 %i0, %u.extent1
  %34 = add i64 %33, %32
  %35 = getelementptr inbounds double, double addrspace(1)* %u, i64 %34
  %36 = load double, double addrspace(1)* %35, align 8
  %37 = fadd double %31, %36
  %38 = add i64 %i1, 1
  %39 = mul i64 %i0, %u.extent1
  %40 = add i64 %39, %38
  %41 = getelementptr inbounds double, double addrspace(1)* %u, i64 %40
  %42 = load double, double addrspace(1)* %41, align 8
  %43 = fadd double %37, %42
  %44 = fmul double %43, 2.500000e-01
  %45 = mul i64 %i0, %v.extent1
  %46 = add i64 %45, %i1
  %47 = getelementptr inbounds double, double addrspace(1)* %v, i64 %46
  store double %44, double addrspace(1)* %47, align 8
  br label %endif

endif:                                            ; preds = %else, %then
  br label %done

done:                                             ; preds = %endif, %entry
  ret void
}

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z13get_global_idj(i32) #1

attributes #0 = { nounwind }
attributes #1 = { nounwind readnone willreturn }

!opencl.ocl.version = !{!0}
!opencl.spir.version = !{!0}

!0 = !{i32 1, i32 2}
!1 = !{i32 1, i32 0, i32 0, i32 1, i32 0, i32 0, i32 0, i32 0, i32 0, i32 0}
!2 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!3 = !{!"double*", !"long", !"long", !"double*", !"long", !"long", !"long", !"long", !"long", !"long"}
!4 = !{!"", !"", !"", !"const", !"", !"", !"", !"", !"", !""}
!5 = !{!"v", !"v_n0", !"v_n1", !"u", !"u_n0", !"u_n1", !"begin0", !"end0", !"begin1", !"end1"}
