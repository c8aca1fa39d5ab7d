/* What seccomp user notification costs on file creation: the probe behind record 0024.
 *
 * A child makes N folders and N files (mkdir, then open with O_CREAT); with MODE 1 each of those calls is
 * sent to the parent (SECCOMP_RET_USER_NOTIF), which answers SECCOMP_USER_NOTIF_FLAG_CONTINUE. That answer
 * is the least a supervisor does and is not sound for a path check (the child can change the path after
 * the check); a sound supervisor would do the call itself, so this is a lower bound on the cost.
 *
 *   cc -O2 -o /tmp/seccomp_notify bench/bench_seccomp_notify.c
 *   mkdir /dev/shm/sn && /tmp/seccomp_notify /dev/shm/sn 5000 0; rm -rf /dev/shm/sn   (plain)
 *   mkdir /dev/shm/sn && /tmp/seccomp_notify /dev/shm/sn 5000 1; rm -rf /dev/shm/sn   (supervised)
 */
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <linux/audit.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void work(const char*dir,int n){char p[512];for(int i=0;i<n;i++){snprintf(p,sizeof p,"%s/d%d",dir,i);mkdir(p,0755);snprintf(p,sizeof p,"%s/d%d/f",dir,i);int fd=open(p,O_CREAT|O_WRONLY,0644);if(fd>=0)close(fd);}}
static int sendfd(int s,int fd){char b[CMSG_SPACE(sizeof(int))];memset(b,0,sizeof b);struct iovec io={.iov_base="x",.iov_len=1};struct msghdr m={.msg_iov=&io,.msg_iovlen=1,.msg_control=b,.msg_controllen=sizeof b};struct cmsghdr*c=CMSG_FIRSTHDR(&m);c->cmsg_level=SOL_SOCKET;c->cmsg_type=SCM_RIGHTS;c->cmsg_len=CMSG_LEN(sizeof(int));memcpy(CMSG_DATA(c),&fd,sizeof fd);return sendmsg(s,&m,0);}
static int recvfd(int s){char b[CMSG_SPACE(sizeof(int))];char x;struct iovec io={.iov_base=&x,.iov_len=1};struct msghdr m={.msg_iov=&io,.msg_iovlen=1,.msg_control=b,.msg_controllen=sizeof b};if(recvmsg(s,&m,0)<0)return -1;int fd;memcpy(&fd,CMSG_DATA(CMSG_FIRSTHDR(&m)),sizeof fd);return fd;}
int main(int argc,char**argv){
  int n=atoi(argv[2]); int notify=atoi(argv[3]);
  int sv[2]; socketpair(AF_UNIX,SOCK_STREAM,0,sv);
  double t0=now();
  pid_t pid=fork();
  if(pid==0){
    if(notify){
      struct sock_filter f[]={
        BPF_STMT(BPF_LD|BPF_W|BPF_ABS,offsetof(struct seccomp_data,nr)),
        BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K,SYS_mkdir,3,0),
        BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K,SYS_mkdirat,2,0),
        BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K,SYS_openat,3,0),
        BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_LD|BPF_W|BPF_ABS,offsetof(struct seccomp_data,args[2])),
        BPF_JUMP(BPF_JMP|BPF_JSET|BPF_K,O_CREAT,0,1),
        BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_ALLOW),
      };
      struct sock_fprog prog={.len=sizeof f/sizeof f[0],.filter=f};
      prctl(PR_SET_NO_NEW_PRIVS,1,0,0,0);
      int lfd=syscall(SYS_seccomp,SECCOMP_SET_MODE_FILTER,SECCOMP_FILTER_FLAG_NEW_LISTENER,&prog);
      if(lfd<0){perror("seccomp");_exit(2);}
      sendfd(sv[1],lfd); close(lfd);
      char c; read(sv[1],&c,1);
    }
    work(argv[1],n); _exit(0);
  }
  if(notify){
    int lfd=recvfd(sv[0]); write(sv[0],"g",1);
    struct seccomp_notif_sizes sz; syscall(SYS_seccomp,SECCOMP_GET_NOTIF_SIZES,0,&sz);
    struct seccomp_notif*req=calloc(1,sz.seccomp_notif); struct seccomp_notif_resp*resp=calloc(1,sz.seccomp_notif_resp);
    long handled=0;
    for(;;){memset(req,0,sz.seccomp_notif);
      if(ioctl(lfd,SECCOMP_IOCTL_NOTIF_RECV,req)<0)break;
      memset(resp,0,sz.seccomp_notif_resp); resp->id=req->id; resp->flags=SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      ioctl(lfd,SECCOMP_IOCTL_NOTIF_SEND,resp); handled++;}
    fprintf(stderr,"handled %ld\n",handled);
  }
  int st; waitpid(pid,&st,0);
  printf("%s: %d folders + %d files in %.3f s (%.1f us per creation)\n",notify?"notify":"plain",n,n,now()-t0,(now()-t0)*1e6/(2*n));
  return 0;
}
